"""Where the MFMA layout oracle lives: AMD's matrix instruction calculator output.

A copy is committed at tests/data/mfma_layouts.json (see tests/data/mfma_layouts.README.md), so CI on a
fresh clone has it; ../shared/reference/ is the upstream copy on developer machines.
"""

import json
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MFMA_LAYOUTS = ROOT / "tests" / "data" / "mfma_layouts.json"


@lru_cache(maxsize=1)
def mfma_layouts() -> dict:
    return json.loads(MFMA_LAYOUTS.read_text())
