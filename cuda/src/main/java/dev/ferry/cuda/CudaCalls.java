// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import dev.ferry.CudaException;
import jcuda.driver.CUresult;

/** Checks CUresult codes: every driver call goes through {@link #check}. */
final class CudaCalls {
    private CudaCalls() {
    }

    static void check(int result, String call) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new CudaException(call + " failed: " + CUresult.stringFor(result) + " (" + result + ")" + hint(result), result);
        }
    }

    private static String hint(int result) {
        return switch (result) {
            case CUresult.CUDA_ERROR_OUT_OF_MEMORY -> "; the device is out of memory: free buffers or use smaller ones";
            case CUresult.CUDA_ERROR_INVALID_VALUE -> "; an argument is invalid (a freed or foreign pointer, or a size past the allocation?)";
            case CUresult.CUDA_ERROR_NO_DEVICE -> "; no CUDA device is visible (check CUDA_VISIBLE_DEVICES and nvidia-smi)";
            case CUresult.CUDA_ERROR_INVALID_DEVICE -> "; the device ordinal does not exist here";
            case CUresult.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED -> "; these two GPUs cannot access each other's memory";
            case CUresult.CUDA_ERROR_ILLEGAL_ADDRESS -> "; a kernel or copy touched an illegal address: the context is unusable now";
            default -> "";
        };
    }
}
