"""The command line as a user meets it: exit codes, bad inputs, streams, escapes."""
