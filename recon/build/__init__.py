"""Building the warehouse from the SQL models in `sql/`: the model DAG (`models`), the runner
(`run`), incremental staging (`incremental`), the config tables the models read (`settings`) and
the guards of a windowed build (`guards`)."""
