// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import java.lang.reflect.Method;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;

/**
 * Conversions between raw addresses and JCuda pointer objects. JCuda keeps the address in
 * protected fields; it computes {@code nativePointer + byteOffset} for every call, so a pointer
 * made as {@code new CUdeviceptr().withByteOffset(address)} stands for {@code address}.
 */
final class JCudaPointers {
    private static final Method NATIVE_POINTER;
    private static final Method BYTE_OFFSET;

    static {
        try {
            NATIVE_POINTER = NativePointerObject.class.getDeclaredMethod("getNativePointer");
            NATIVE_POINTER.setAccessible(true);
            BYTE_OFFSET = Pointer.class.getDeclaredMethod("getByteOffset");
            BYTE_OFFSET.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private JCudaPointers() {
    }

    /** A CUdeviceptr for a raw address (device, or host under unified addressing). */
    static CUdeviceptr device(long address) {
        return new CUdeviceptr().withByteOffset(address);
    }

    /** The raw handle a JCuda object (a context, a stream) wraps. */
    static long handle(NativePointerObject o) {
        try {
            return (long) NATIVE_POINTER.invoke(o);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the handle of a JCuda object", e);
        }
    }

    /** The raw address a JCuda pointer stands for. */
    static long address(Pointer p) {
        try {
            return (long) NATIVE_POINTER.invoke(p) + (long) BYTE_OFFSET.invoke(p);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the address of a JCuda pointer", e);
        }
    }
}
