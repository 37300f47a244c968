# Shared steps of examples/*/fetch-and-build.sh, sourced by them (bash, `set -euo pipefail`):
#
#   debian_source PACKAGE VERSION SHA256 BUILD_DIR MARKER
#       Sets `src` to the unpacked source of Debian's source package PACKAGE=VERSION under
#       BUILD_DIR, fetching it with `apt-get source` (adding a deb-src entry for bookworm
#       when apt has none) the first time. The .dsc pins it: its SHA-256 must be SHA256
#       (dpkg-source then checks every tarball against it). MARKER is a file every unpacked
#       source of the package has (e.g. configure.ac), to find the source directory. A
#       source unpacked from another version is removed with every build under BUILD_DIR
#       except the .dsc and tarballs of the pinned one.
#
#   link_program_bitcode OUT OBJECT...
#       Checks that every OBJECT is raw LLVM bitcode, links them with llvm-link-19 and keeps
#       what `main` reaches (internalize + globaldce: no optimisation) in OUT.
#
#   check_bitcode FILE...
#       Fails unless every FILE is raw LLVM bitcode.
#
# Both log with `log` and need `sudo_`, which this file defines.

sudo_() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
log() { echo "fetch-and-build: $*" >&2; }

debian_source() {
    local package="$1" version="$2" sha256="$3" build="$4" marker="$5"
    # Absolute: apt-get source and dpkg-source run inside it, with the .dsc's path.
    mkdir -p "$build"
    build="$(cd "$build" && pwd)"
    local dsc="$build/${package}_${version#*:}.dsc" d
    _debian_verify() {
        local got
        got="$(sha256sum "$dsc" | cut -d' ' -f1)"
        if [ "$got" != "$sha256" ]; then
            log "checksum mismatch: $dsc has sha256 $got, expected $sha256"
            exit 1
        fi
    }
    _debian_find() {
        src=""
        for d in "$build/$package"-*/; do
            [ -e "$d/$marker" ] && src="${d%/}"
        done
        return 0
    }
    mkdir -p "$build"
    _debian_find
    if [ -n "$src" ] && [ ! -f "$dsc" ]; then
        # Unpacked from another version (or before the pin): start again from the pinned one.
        log "no $dsc: removing the unpacked source and every build of another version"
        find "$build" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
        src=""
    fi
    if [ -z "$src" ]; then
        if ! command -v dpkg-source >/dev/null; then
            log "installing dpkg-dev (for apt-get source)"
            sudo_ apt-get install -y dpkg-dev
        fi
        if [ -z "$(apt-cache showsrc "$package" 2>/dev/null)" ]; then
            local list=/etc/apt/sources.list.d/knobs-deb-src.sources
            log "adding a deb-src entry for bookworm main ($list) and running apt-get update"
            printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
                | sudo_ tee "$list" >/dev/null
            sudo_ apt-get update -qq
        fi
        log "apt-get source --download-only $package=$version"
        (cd "$build" && apt-get source -qq --download-only "$package=$version") \
            || { log "apt-get source $package=$version failed (no longer in the archive? snapshot.debian.org keeps every version)"; exit 1; }
        [ -f "$dsc" ] || { log "apt-get source did not download $dsc"; exit 1; }
        # Verified before anything is unpacked; dpkg-source then checks the tarballs against it.
        _debian_verify
        (cd "$build" && dpkg-source -q -x "$dsc") || { log "dpkg-source -x $dsc failed"; exit 1; }
        _debian_find
        [ -n "$src" ] || { log "apt-get source did not unpack $package (no */$marker)"; exit 1; }
    fi
    _debian_verify
    log "source: $src"
}

check_bitcode() {
    local f
    for f in "$@"; do
        case "$(head -c 4 "$f" | od -An -tx1 | tr -d ' ')" in
            4243c0de) ;;   # 'BC' 0xC0DE: raw LLVM bitcode
            *) log "$f is not LLVM bitcode"; exit 1 ;;
        esac
    done
}

link_program_bitcode() {
    local out="$1"
    shift
    check_bitcode "$@"
    # Link everything, then drop what main cannot reach. `llvm-link --only-needed` is no
    # substitute: it applies to the first file too and silently drops main.
    llvm-link-19 -o "$out.all.bc" "$@"
    opt-19 -passes='internalize,globaldce' -internalize-public-api-list=main \
        "$out.all.bc" -o "$out"
    rm -f "$out.all.bc"
    # (grep without -q: under pipefail, -q's early exit would fail llvm-nm with SIGPIPE)
    llvm-nm-19 --defined-only "$out" | grep -w main >/dev/null \
        || { log "$out has no main"; exit 1; }
}
