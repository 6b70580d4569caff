#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
set -u
export MPS=1 ALGO_NP="2 4" STREAM_BENCH=0 STREAM_NP="2 4" TRUST_NP=2 TRUST_BACKENDS="ompi staged mvapich"
scripts/device-run.sh info algorithms stream trust
