import sys

from ._cmake import PATH_FLAGS

if len(sys.argv) == 2 and sys.argv[1] in PATH_FLAGS:  # python -m fastgemm --cmake-dir
    print(PATH_FLAGS[sys.argv[1]]())
    raise SystemExit(0)

from .cli import main

raise SystemExit(main())
