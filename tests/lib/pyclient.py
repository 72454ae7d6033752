"""Puts client/python on sys.path so tests import agentd_client from the source tree."""

import os
import sys

PYCLIENT_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "client",
                                            "python"))
if PYCLIENT_DIR not in sys.path:
    sys.path.insert(0, PYCLIENT_DIR)
