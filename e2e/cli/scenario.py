"""Checks shared by the boto3 scenarios of this directory (each script imports
them; Python finds this file next to the script it runs)."""

import sys


def check(what, got, want):
    """Exits with a failure unless got equals want."""
    if got != want:
        sys.exit(f"FAIL: {what}: got {got!r}, want {want!r}")
    print(f"ok: {what} = {want!r}")


def expect_error(what, exc_type, fn, **kwargs):
    """Calls fn(**kwargs), which must raise exc_type; returns the error's
    response["Error"] (its Code and Message)."""
    try:
        fn(**kwargs)
    except exc_type as e:
        err = e.response["Error"]
        print(f"ok: {what}: {err['Code']}: {err['Message']}")
        return err
    sys.exit(f"FAIL: {what}: no {exc_type.__name__}")
