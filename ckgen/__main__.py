from ckgen.cli import main

raise SystemExit(main())
