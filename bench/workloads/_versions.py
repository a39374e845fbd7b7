"""Which API generation of a framework is installed: the version switches of the workloads.

Workloads choose their API by the framework version inside the stack, only through these two
predicates, so that tests/containers/apipaths.py can tell statically which branch each stack's framework
version takes (tests/containers/test_api_paths.py checks every call on that branch against the framework's
API list at that version):

    if _versions.at_least(tf, 1, 13): ...      # tf.compat.v1 exists from 1.13 on
    if _versions.available("keras"): ...       # the stack installs the `keras` package

Standard library only; Python 3.5 syntax (2.7-compatible).
"""
import re


def version_tuple(module_or_text):
    """The leading numbers of module.__version__ (or of a version string): "0.1.12_2" -> (0, 1, 12),
    "1.3.0+cu100" -> (1, 3, 0), "2.0.0-alpha0" -> (2, 0, 0)."""
    text = getattr(module_or_text, "__version__", module_or_text)
    m = re.match(r"\d+(?:\.\d+)*", str(text))
    return tuple(int(x) for x in m.group(0).split(".")) if m else (0,)


def at_least(module, *wanted):
    """True when module.__version__ >= wanted (missing trailing parts count as 0)."""
    have = version_tuple(module)
    have = have + (0,) * (len(wanted) - len(have))
    return have[:len(wanted)] >= tuple(wanted)


def available(name):
    """True when the package `name` imports (an ImportError, or any error while importing, is False)."""
    try:
        __import__(name)
    except Exception:  # a broken install counts as absent; the workload then takes another path
        return False
    return True
