// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/* Stand-in for the CUDA toolkit's cuda_runtime.h, for building nccl_ref.c without a toolkit:
 * nccl.h needs only cudaStream_t from it (the same handle as the driver's CUstream). */
#pragma once
typedef struct CUstream_st *cudaStream_t;
