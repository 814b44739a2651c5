"""Tests: gradients against centred finite differences, naive oracles, tasks, theory, runs.

Run with `make test` (it creates .venv and installs requirements.txt first).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import recall as rc
import theory
import train
import plots

HERE = os.path.dirname(os.path.abspath(__file__))


# ----------------------------------------------------------------------------- core


# ----------------------------------------------------------------------------- paper A experiments


# ----------------------------------------------------------------------------- paper B experiments
