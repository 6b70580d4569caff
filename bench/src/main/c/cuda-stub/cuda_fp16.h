// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/* Stand-in for the CUDA toolkit's cuda_fp16.h (nccl.h includes it; nccl_ref.c uses no half type). */
#pragma once
