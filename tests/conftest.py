"""pytest configuration shared by every test folder.

Importing this file puts ``tests/`` on ``sys.path`` (pytest's default "prepend" import
mode), so tests in subfolders import the shared helpers of ``tests/models.py``.

It also builds emu kernels at ``-O0`` (``$TMLIR_EMU_OPT``, unless already set, for this
process and the tools it starts): the suite compiles a few thousand small modules, each
in about half the time of ``-O2``, with the same results.
"""

import os

os.environ.setdefault("TMLIR_EMU_OPT", "0")
