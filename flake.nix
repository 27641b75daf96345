{
  description = "Fleetgate: Crossplane composition functions that serve models across a fleet of clusters";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      # The same two commands the README names, with the toolchain they need.
      devShells = forAll (pkgs: { default = import ./nix/shell.nix { inherit pkgs; }; });

      apps = forAll (pkgs: {
        render = { type = "app"; program = "${import ./nix/command.nix { inherit pkgs; target = "render"; }}/bin/fleetgate-render"; };
        test = { type = "app"; program = "${import ./nix/command.nix { inherit pkgs; target = "test"; }}/bin/fleetgate-test"; };
        default = self.apps.${pkgs.system}.render;
      });

      # The function runtime images (Linux): the contract of package/image.json
      # and the wheels of package/python.lock.json, as `make packages` builds
      # them. `nix build .#compose-model-endpoint` gives a docker-archive tarball.
      packages = nixpkgs.lib.genAttrs [ "x86_64-linux" "aarch64-linux" ]
        (system: import ./nix/image.nix { pkgs = nixpkgs.legacyPackages.${system}; });

      # `nix flake check` runs the test command in the dev shell's toolchain.
      # It needs the package registries (PyPI, the Go module proxy), so it is
      # not sandbox-pure: run it with --option sandbox relaxed.
      checks = forAll (pkgs: {
        test = pkgs.runCommand "fleetgate-test" {
          nativeBuildInputs = (import ./nix/shell.nix { inherit pkgs; }).nativeBuildInputs;
          __noChroot = true;
        } ''
          cp -r ${self} src && chmod -R u+w src && cd src
          export HOME=$TMPDIR
          make test
          touch $out
        '';
      });
    };
}
