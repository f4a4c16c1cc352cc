"""The CLI's log handler (recon/cli/app.py, `_logging`) writes to stderr as it is at each record:
commands run in-process one after another (tests, CliRunner) each get their own records at their
own level, never a "--- Logging error ---" from a stream an earlier command's runner closed, nor
the INFO records an earlier command's -v let through."""

import io
import logging
import sys

from recon.cli.app import _logging


def test_a_second_in_process_command_logs_into_its_own_stderr_not_the_firsts_closed_one():
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers.clear()  # as without pytest's logging plugin: basicConfig takes effect once
    out = sys.stderr
    try:
        first = io.StringIO()
        sys.stderr = first
        _logging(verbose=True)  # the first command ran with -v
        logging.getLogger("recon.test").info("first run's detail")
        first.close()  # the first runner is done with its stream
        second = io.StringIO()
        sys.stderr = second
        _logging(verbose=False)
        logging.getLogger("recon.test").info("second run's detail: not shown without -v")
        logging.getLogger("recon.test").error("second run's error")
        text = second.getvalue()
    finally:
        sys.stderr = out
        for h in root.handlers[:]:
            root.removeHandler(h)
        root.handlers.extend(saved[0])
        root.setLevel(saved[1])
    assert text == "ERROR recon.test: second run's error\n", text


def test_a_command_leaves_the_level_of_logging_it_did_not_configure_alone(caplog):
    """Under pytest's capture (or a program embedding the CLI), logging is someone else's: a
    command without -v must not raise the root level to ERROR for everything that follows
    (warnings other tests read from caplog went missing)."""
    root = logging.getLogger()
    before = root.level
    _logging(verbose=False)
    assert root.level == before
    logging.getLogger("recon.test").warning("still seen")
    assert "still seen" in caplog.text
