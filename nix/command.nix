# A wrapper running one Makefile target from the current checkout.
{ pkgs, target }:
pkgs.writeShellApplication {
  name = "fleetgate-${target}";
  runtimeInputs = (import ./shell.nix { inherit pkgs; }).nativeBuildInputs;
  text = ''
    exec make ${target}
  '';
}
