-- A keyed fact keeps its normalised value beside the user's words: `database` =
-- `postgresql`. Its canonical statement ("database: postgresql") is part of what its
-- vector is made from and of what query words are matched against, so a question
-- about the key finds a fact whose sentence never names it.
ALTER TABLE memories ADD COLUMN value text;
