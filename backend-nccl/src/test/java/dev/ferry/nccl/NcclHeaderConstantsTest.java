// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every NCCL constant the binding uses, checked against the installed wheel's nccl.h by compiling
 * and running a C program (gcc or cc; no CUDA needed: nccl.h includes cuda_runtime.h and
 * cuda_fp16.h only for cudaStream_t, so stubs of those two headers are supplied). Never skipped:
 * no compiler is a failure, as is a missing header.
 */
class NcclHeaderConstantsTest {

    private static final String PROGRAM = """
            #include <stdio.h>
            #include <stddef.h>
            #include <limits.h>
            /* nccl.h includes <cuda_runtime.h> for cudaStream_t; a stub stands in for it here */
            #include "nccl.h"
            #define P(name) printf("%s %ld\\n", #name, (long)(name))
            int main(void) {
              P(ncclSuccess); P(ncclUnhandledCudaError); P(ncclSystemError); P(ncclInternalError); P(ncclInvalidArgument);
              P(ncclInvalidUsage); P(ncclRemoteError); P(ncclInProgress); P(ncclTimeout);
              P(ncclInt8); P(ncclUint8); P(ncclInt32); P(ncclUint32); P(ncclInt64); P(ncclUint64);
              P(ncclFloat16); P(ncclFloat32); P(ncclFloat64); P(ncclBfloat16);
              P(ncclSum); P(ncclProd); P(ncclMax); P(ncclMin); P(ncclAvg);
              P(NCCL_SPLIT_NOCOLOR); P(NCCL_UNIQUE_ID_BYTES);
              printf("sizeof_ncclUniqueId %ld\\n", (long)sizeof(ncclUniqueId));
              printf("sizeof_ncclComm_t %ld\\n", (long)sizeof(ncclComm_t));
              printf("sizeof_ncclResult_t %ld\\n", (long)sizeof(ncclResult_t));
              printf("sizeof_ncclDataType_t %ld\\n", (long)sizeof(ncclDataType_t));
              printf("sizeof_ncclRedOp_t %ld\\n", (long)sizeof(ncclRedOp_t));
              printf("sizeof_size_t %ld\\n", (long)sizeof(size_t));
              printf("NCCL_VERSION_CODE %ld\\n", (long)NCCL_VERSION_CODE);
              return 0;
            }
            """;

    /** Stub of the one CUDA runtime type nccl.h uses. */
    private static final String CUDA_STUB = "#pragma once\ntypedef struct CUstream_st *cudaStream_t;\n";

    @Test
    void constantsMatchTheWheelsHeader(@TempDir Path dir) throws Exception {
        Path include = NcclLibraryTest.include();
        Files.writeString(dir.resolve("check.c"), PROGRAM);
        Files.writeString(dir.resolve("cuda_runtime.h"), CUDA_STUB);
        Files.writeString(dir.resolve("cuda_fp16.h"), "#pragma once\n");
        String cc = Files.isExecutable(Path.of("/usr/bin/gcc")) ? "/usr/bin/gcc" : "cc";
        Map<String, Long> got = new HashMap<>();
        String compile = run(dir, cc, "-std=c11", "-I" + dir, "-I" + include, "-o", dir.resolve("check").toString(), dir.resolve("check.c").toString());
        assertTrue(Files.isExecutable(dir.resolve("check")), "the C check did not compile against " + include + "/nccl.h:\n" + compile);
        for (String line : run(dir, dir.resolve("check").toString()).split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length == 2) got.put(f[0], Long.parseLong(f[1]));
        }
        Map<String, Integer> expected = new HashMap<>();
        expected.put("ncclSuccess", NcclTypes.SUCCESS);
        expected.put("ncclUnhandledCudaError", NcclTypes.UNHANDLED_CUDA_ERROR);
        expected.put("ncclSystemError", NcclTypes.SYSTEM_ERROR);
        expected.put("ncclInternalError", NcclTypes.INTERNAL_ERROR);
        expected.put("ncclInvalidArgument", NcclTypes.INVALID_ARGUMENT);
        expected.put("ncclInvalidUsage", NcclTypes.INVALID_USAGE);
        expected.put("ncclRemoteError", NcclTypes.REMOTE_ERROR);
        expected.put("ncclInProgress", NcclTypes.IN_PROGRESS);
        expected.put("ncclTimeout", NcclTypes.TIMEOUT);
        expected.put("ncclInt8", NcclTypes.INT8);
        expected.put("ncclUint8", NcclTypes.UINT8);
        expected.put("ncclInt32", NcclTypes.INT32);
        expected.put("ncclUint32", NcclTypes.UINT32);
        expected.put("ncclInt64", NcclTypes.INT64);
        expected.put("ncclUint64", NcclTypes.UINT64);
        expected.put("ncclFloat16", NcclTypes.FLOAT16);
        expected.put("ncclFloat32", NcclTypes.FLOAT32);
        expected.put("ncclFloat64", NcclTypes.FLOAT64);
        expected.put("ncclBfloat16", NcclTypes.BFLOAT16);
        expected.put("ncclSum", NcclTypes.SUM);
        expected.put("ncclProd", NcclTypes.PROD);
        expected.put("ncclMax", NcclTypes.MAX);
        expected.put("ncclMin", NcclTypes.MIN);
        expected.put("ncclAvg", NcclTypes.AVG);
        expected.put("NCCL_SPLIT_NOCOLOR", NcclTypes.SPLIT_NOCOLOR);
        expected.put("NCCL_UNIQUE_ID_BYTES", NcclTypes.UNIQUE_ID_BYTES);
        expected.put("sizeof_ncclUniqueId", (int) NcclAbi.UNIQUE_ID.byteSize());
        expected.put("sizeof_ncclComm_t", 8); // passed as JAVA_LONG
        expected.put("sizeof_ncclResult_t", 4); // returned as JAVA_INT
        expected.put("sizeof_ncclDataType_t", 4);
        expected.put("sizeof_ncclRedOp_t", 4);
        expected.put("sizeof_size_t", 8);
        expected.put("NCCL_VERSION_CODE", Nccl.versionCode()); // the header is the loaded library's
        for (var e : expected.entrySet()) {
            assertTrue(got.containsKey(e.getKey()), "the C check printed no " + e.getKey() + ": " + got);
            assertEquals((long) e.getValue(), got.get(e.getKey()), e.getKey() + " in nccl.h");
        }
    }

    private static String run(Path dir, String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "timed out: " + String.join(" ", cmd));
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + " failed:\n" + out);
        return out;
    }
}
