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

      # `nix run .#e2e` is `make e2e`: the real control plane as local processes.
      apps = forAll (pkgs:
        let app = target: { type = "app"; program = "${import ./nix/command.nix { inherit pkgs target; }}/bin/fleetgate-${target}"; };
        in {
          render = app "render";
          test = app "test";
          e2e = app "e2e";
          default = self.apps.${pkgs.system}.render;
        });

      # The function runtime images (Linux): the contract of package/image.json
      # and the wheels of uv.lock (nix/wheels.json), as `make packages` builds
      # them. `nix build .#compose-model-endpoint` gives a docker-archive tarball.
      packages = nixpkgs.lib.genAttrs [ "x86_64-linux" "aarch64-linux" ]
        (system: import ./nix/image.nix { pkgs = nixpkgs.legacyPackages.${system}; });

      # `nix flake check` runs the test command in the dev shell's toolchain.
      # It needs the package registries (PyPI, the Go module proxy), so it is
      # not sandbox-pure: run it with --option sandbox relaxed.
      # `checks.e2e` is `make e2e` alone (etcd, three API servers, Crossplane and
      # provider-kubernetes on loopback; part of `make test` too).
      checks = forAll (pkgs:
        let check = target: pkgs.runCommand "fleetgate-${target}" {
          nativeBuildInputs = (import ./nix/shell.nix { inherit pkgs; }).nativeBuildInputs;
          __noChroot = true;
        } ''
          cp -r ${self} src && chmod -R u+w src && cd src
          export HOME=$TMPDIR
          make ${target}
          touch $out
        '';
        in { test = check "test"; e2e = check "e2e"; });
    };
}
