/* Stand-in for the CUDA toolkit's cuda_fp16.h (nccl.h includes it; nccl_ref.c uses no half type). */
#pragma once
