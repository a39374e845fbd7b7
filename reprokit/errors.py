"""User errors: one line naming the problem and the fix, exit status 2."""


class UserError(Exception):
    """A problem the user can fix (bad argument, missing file, unknown name). Exit status 2."""

    exit_code = 2
