# Toolchain for `make render` and `make test`: Python >= 3.11, Go >= 1.25, make, git.
{ pkgs }:
pkgs.mkShell {
  nativeBuildInputs = [ pkgs.python311 pkgs.go pkgs.gnumake pkgs.git ];
}
