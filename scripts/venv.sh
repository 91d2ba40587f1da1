#!/usr/bin/env bash
# scripts/venv.sh - the project's Python environment: creates .venv (python3 -m venv) when it is
# missing, installs experiments/requirements.txt from PyPI into it when a package is missing, and
# prints the interpreter's path on stdout (pip's messages go to stderr).
#   PYTHON=...  the interpreter to build the environment from (default: python3)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$root/.venv
req=$root/experiments/requirements.txt
py=${PYTHON:-python3}

if [[ ! -x $venv/bin/python ]]; then
	"$py" -m venv "$venv" >&2 || {
		echo "venv.sh: '$py -m venv' failed (on Debian: apt-get install python3-venv)" >&2
		exit 1
	}
fi
if ! "$venv/bin/python" -c 'import numpy, matplotlib' 2>/dev/null; then
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2 || {
		echo "venv.sh: pip could not install $req into $venv" >&2
		exit 1
	}
fi
echo "$venv/bin/python"
