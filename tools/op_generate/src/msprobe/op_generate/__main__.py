"""``python -m msprobe.op_generate -i config_op.json -o OUT_DIR``: the same command as ``msprobe op_generate``."""
from __future__ import annotations

import sys

from msprobe.schema import MsprobeError

from .cli import standalone_app


def main() -> None:
    try:
        standalone_app()(prog_name="python -m msprobe.op_generate", standalone_mode=False)
    except MsprobeError as exc:
        print(f"msprobe: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except Exception as exc:  # click's usage errors: shown as click shows them, exit 2
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
