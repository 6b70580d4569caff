#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
set -u
export SPREAD=1 ALGO_NP=2 PATTERNS_CONFORMANCE=0 STREAM_BENCH=0 STREAM_NP=2
scripts/device-run.sh info algorithms patterns stream
