# Sourced by the scripts that need Debian packages (setup.sh, sanitize.sh).
# install_missing_packages LABEL PACKAGE...: installs those of the packages that are not
# installed yet (apt-get, through sudo unless root), saying which under LABEL.
install_missing_packages() {
  local label=$1 package
  shift
  local -a missing=() sudo=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  ((${#missing[@]})) || return 0
  echo "$label: installing ${missing[*]}"
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
