-- `recon check`, step 4: the resources of the day whose provider bill has not landed yet
-- (parameter: the day).
select count(*)
from marts.settlement
where day = ? and state = 'awaiting_bill'
