#!/bin/sh
echo "coverage is not supported in an offline build" >&2
exit 1
