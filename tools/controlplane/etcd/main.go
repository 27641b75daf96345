// Command etcd is etcd's own server entry point, built from the pinned
// go.etcd.io/etcd/server/v3 module. etcd's root module (which holds the
// upstream main package) cannot be installed from the module proxy because
// its go.mod replaces its sibling modules with local paths; this wrapper pins
// them as ordinary requirements instead.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
