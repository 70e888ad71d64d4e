import sys

from rag_core.cli import main

sys.exit(main())
