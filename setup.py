"""Only for a PEP 517 build: pyproject.toml holds everything, setuptools.build_meta runs this file.

A pip older than 21.3 cannot install retrystorm in editable mode (no PEP 660), and one older than 19 cannot build it
at all (no PEP 517): both run ``setup.py develop`` or ``setup.py install`` directly. Instead of setuptools failing on
pyproject.toml settings it does not know, they get one line saying what to install, and exit status 2 (pip prints
its own frame around it and exits 1).
"""

import sys

if "setuptools.build_meta" not in sys.modules:
    sys.stderr.write(
        "retrystorm: error: this pip is too old to install retrystorm (it needs pip >= 21.3, for PEP 517 and 660 "
        "builds): python3 -m pip install --upgrade pip, then install again; retrystorm runs on Linux with "
        "Python >= 3.11\n"
    )
    sys.exit(2)

from setuptools import setup

setup()
