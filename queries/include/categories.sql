-- The five time categories of a breakdown, in the order every breakdown lists them.
--
-- Columns:
--   ord       1 to 5
--   category  compute | communication | host | stall | other
SELECT * FROM (VALUES (1, 'compute'), (2, 'communication'), (3, 'host'), (4, 'stall'), (5, 'other')) AS c(ord, category)
