"""pytest configuration shared by every test folder.

Importing this file puts ``tests/`` on ``sys.path`` (pytest's default "prepend" import
mode), so tests in subfolders import the shared helpers of ``tests/models.py``.
"""
