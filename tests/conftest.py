import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def theano_python() -> str:
    """The theano-0.9 stack's venv (numpy < 2), created exactly as the local runner creates it and
    cached under REPROKIT_VENV_DIR; REPROKIT_THEANO_PYTHON overrides it."""
    from reprokit import suites
    from reprokit.runners import venvs
    from reprokit.runners.base import StackUnavailable

    explicit = os.environ.get("REPROKIT_THEANO_PYTHON")
    if explicit:
        return explicit
    try:
        return venvs.python_for("theano-0.9", suites.load_stacks()["theano-0.9"],
                                say=lambda *_: None)
    except StackUnavailable as e:
        pytest.skip("the Theano environment cannot be installed here: %s" % e)
