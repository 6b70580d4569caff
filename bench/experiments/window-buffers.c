// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/* An osu_bw-style window of 64 messages of N bytes between 2 ranks, with the messages' buffers
 * cycled over NBUF distinct places (osu_bw reuses one: SAME=1), and four protocols:
 *   mode 0: the plain window;
 *   mode 1: plus a 16448-byte "first piece" per message on another communicator (staged's wire
 *           format), data receives posted up front;
 *   mode 2: the data receive posted only once its first piece has arrived (as staged does);
 *   mode 3: as 2 with a 64-byte first piece.
 * Question: is the staged pipeline's window bandwidth lost to its protocol or to its buffers?
 *   mpicc -O2 -o window-buffers window-buffers.c
 *   mpirun -np 2 ./window-buffers N [SAME] [NBUF]     (best of 20 windows, GB/s) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm bulk; MPI_Comm_dup(MPI_COMM_WORLD, &bulk);
    long n = argc > 1 ? atol(argv[1]) : 1 << 20; int W = 64, iters = 20; long stride = argc > 2 && atoi(argv[2]) ? 0 : n; int nbuf = argc > 3 ? atoi(argv[3]) : 64;
    char *buf = malloc(n * W), *fp = malloc(16448 * W), ack = 0;
    memset(buf, 1, n * W); memset(fp, 2, 16448 * W);
    for (int mode = 0; mode < 4; mode++) {
        int fpn = mode == 3 ? 64 : 16448;
        double best = 1e9;
        for (int it = 0; it < iters; it++) {
            MPI_Request rq[2 * 64]; int nr = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (rank == 0) {
                for (int k = 0; k < W; k++) {
                    if (mode) MPI_Isend(fp + k * 16448, fpn, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &rq[nr++]);
                    MPI_Isend(buf + (k % nbuf) * stride, n, MPI_BYTE, 1, 100 + k, bulk, &rq[nr++]);
                }
                MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
                MPI_Recv(&ack, 1, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Request f[64], d[64];
                for (int k = 0; k < W; k++) {
                    if (mode) MPI_Irecv(fp + k * 16448, fpn, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &f[k]);
                    if (mode < 2) MPI_Irecv(buf + (k % nbuf) * stride, n, MPI_BYTE, 0, 100 + k, bulk, &d[k]);
                }
                if (mode >= 2) {
                    int posted = 0;
                    while (posted < W) { /* post data receives as first pieces land, in order */
                        int flag; MPI_Test(&f[posted], &flag, MPI_STATUS_IGNORE);
                        if (flag) { MPI_Irecv(buf + (posted % nbuf) * stride, n, MPI_BYTE, 0, 100 + posted, bulk, &d[posted]); posted++; }
                    }
                } else if (mode == 1) MPI_Waitall(W, f, MPI_STATUSES_IGNORE);
                MPI_Waitall(W, d, MPI_STATUSES_IGNORE);
                MPI_Send(&ack, 1, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
            }
            double t = MPI_Wtime() - t0;
            if (t < best) best = t;
        }
        if (rank == 0) printf("size %ld mode %d: %.2f GB/s (best of %d)\n", n, mode, n * (double)W / best / 1e9, iters);
    }
    MPI_Finalize();
    return 0;
}
