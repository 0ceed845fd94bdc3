package hybrid

import "os"

func crashChild() { os.Exit(3) }
