# Toolchain for `make render`, `make test` and `make e2e`: Python >= 3.11,
# Go >= 1.25, make, git; on Linux also ip (iproute2) and unshare/nsenter
# (util-linux), with which `make e2e` keeps its control plane on a loopback of
# its own network namespace (plane/processes.py; it runs as root).
{ pkgs }:
pkgs.mkShell {
  nativeBuildInputs = [ pkgs.python311 pkgs.go pkgs.gnumake pkgs.git ]
    ++ pkgs.lib.optionals pkgs.stdenv.isLinux [ pkgs.iproute2 pkgs.util-linux ];
}
