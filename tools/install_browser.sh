#!/usr/bin/env bash
# `make browser`: Debian's chromium for the report's browser tests (pytest marker `browser`,
# tests/jobs/browser.py), installed when missing. Without root and apt-get those tests skip and
# say so; under CI=true a chromium that cannot be installed fails the run instead of hiding them.
set -u
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "make browser: chromium is missing and apt-get cannot run as root here: the browser tests will skip (install Debian's chromium to run them)"
  [ "${CI:-}" = "true" ] && exit 1
  exit 0
fi
echo "make browser: installing Debian's chromium for the report's browser tests (about 20 s)"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q chromium >/dev/null 2>&1 \
  || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }
if ! command -v chromium >/dev/null 2>&1; then
  echo "make browser: apt-get could not install chromium: the browser tests will skip"
  [ "${CI:-}" = "true" ] && exit 1
fi
exit 0
