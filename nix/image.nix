# The Fleetgate function runtime images, built with Nix: the same contract as
# `make packages` (package/image.json: entrypoint, user, port, environment)
# and the same locked wheels (uv.lock's, as nix/wheels.json names them: URL
# and sha256), on nixpkgs' Python 3.11 instead of Debian's. One attribute per
# function; each is a docker-archive tarball for `docker load` or
# `crossplane xpkg build --embed-runtime-image-tarball`.
{ pkgs }:
let
  lib = pkgs.lib;
  contract = lib.importJSON ../package/image.json;
  lock = lib.importJSON ./wheels.json; # derived from uv.lock by `make package-lock`
  version = (lib.importTOML ../pyproject.toml).project.version;
  arch = {
    x86_64-linux = "amd64";
    aarch64-linux = "arm64";
  }.${pkgs.stdenv.hostPlatform.system};
  python = pkgs."python${lib.replaceStrings [ "." ] [ "" ] contract.python}";
  wheels = map (w: pkgs.fetchurl { url = w.url; sha256 = w.sha256; }) lock.wheels.${arch};
  # nixpkgs' Python does not search Debian's dist-packages: name the site directory.
  site = "/usr/local/lib/python${contract.python}/site-packages";

  # The fleetgate wheel built from this checkout and every locked wheel,
  # installed under /usr/local as the Debian-based image has them; the
  # manylinux extension modules are patched to find nixpkgs' libraries.
  runtime = pkgs.stdenv.mkDerivation {
    pname = "fleetgate-runtime";
    inherit version;
    src = lib.fileset.toSource {
      root = ../.;
      fileset = lib.fileset.unions [ ../pyproject.toml ../README.md ../functions ];
    };
    nativeBuildInputs = [
      python
      python.pkgs.build
      python.pkgs.installer
      python.pkgs.setuptools
      python.pkgs.wheel
      pkgs.autoPatchelfHook
    ];
    buildInputs = [ pkgs.stdenv.cc.cc.lib pkgs.zlib ];
    buildPhase = ''
      runHook preBuild
      python -m build --wheel --no-isolation --outdir dist .
      runHook postBuild
    '';
    installPhase = ''
      runHook preInstall
      for wheel in ${lib.concatStringsSep " " wheels} dist/*.whl; do
        python -m installer --destdir "$out" --prefix /usr/local --compile-bytecode 0 "$wheel"
      done
      runHook postInstall
    '';
  };

  image = function: pkgs.dockerTools.buildLayeredImage {
    name = "fleetgate/${function}";
    tag = "v${version}";
    contents = [ runtime ];
    extraCommands = ''
      mkdir -p -m 1777 tmp
      mkdir -p home/nonroot
    '';
    config = {
      Entrypoint = [ "${contract.bin}/${function}" ];
      User = contract.user;
      Env = contract.env ++ [ "PYTHONPATH=${site}" ];
      WorkingDir = "/";
      ExposedPorts = { "${toString contract.port}/tcp" = { }; };
    };
  };
in
lib.genAttrs contract.functions image
