# What the set-up scripts share, sourced after each defines its own `log`: running a command as root, and whether a
# Debian package is installed. Not a script of its own.

# Runs its arguments as root: directly when this is root, else through sudo; fails, saying so, without either.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo > /dev/null; then
        sudo "$@"
    else
        log "need root for: $*"
        return 1
    fi
}

# Whether the Debian package `$1` is installed.
installed() { dpkg-query -W -f='${Status}' "$1" 2> /dev/null | grep -q "install ok installed"; }
