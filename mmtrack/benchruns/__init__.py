"""`mmtrack bench`'s own records: the run journal, the saved report and the comparison with history."""
