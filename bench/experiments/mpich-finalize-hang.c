// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

/* MPICH 4.0.2 (ch4:ucx, UCX 1.13.1) over TCP between network-namespace hosts: MPI_Finalize that
 * sometimes never returns, without Ferry. Rank pairs exchange 4 MiB three times, one allreduce,
 * then MPI_Finalize. FIN_BARRIER=1 adds an MPI_Barrier before it, FIN_A2A=1 an MPI_Alltoall and a
 * barrier (every pair has then talked).
 *
 *   mpicc.mpich -O2 -o mpich-finalize-hang mpich-finalize-hang.c
 *   scripts/netns-hosts.sh --prefix fz up 2; printf 'fz-h1:2\nfz-h2:2\n' > hosts
 *   scripts/netns-hosts.sh --prefix fz exec fz-h1 mpiexec.mpich -f hosts -launcher ssh \
 *       -launcher-exec scripts/netns-agent -iface fe0 -n 4 -genv UCX_TLS tcp,self \
 *       -genv UCX_NET_DEVICES fe0 ./mpich-finalize-hang 4194304
 *
 * Results (docs/reliability.md, section 6): hangs in 11 of 60 runs as is, 12 of 60 with
 * UCX_TCP_PUT_ENABLE=n, 8 of 40 with FIN_BARRIER=1, 16 of 27 with FIN_A2A=1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc,char**argv){MPI_Init(&argc,&argv);int r,n;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);
 size_t sz=(argc>1?atol(argv[1]):4<<20); char*b=malloc(sz); memset(b,r,sz);
 for(int it=0;it<3;it++){ int peer=r^1; if(peer<n){ if(r&1){MPI_Recv(b,sz,MPI_BYTE,peer,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE);MPI_Send(b,sz,MPI_BYTE,peer,0,MPI_COMM_WORLD);} else {MPI_Send(b,sz,MPI_BYTE,peer,0,MPI_COMM_WORLD);MPI_Recv(b,sz,MPI_BYTE,peer,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE);} } }
 double x=r,y; MPI_Allreduce(&x,&y,1,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD);
 if(getenv("FIN_BARRIER")) MPI_Barrier(MPI_COMM_WORLD);
 if(getenv("FIN_A2A")){int*s=calloc(n,sizeof(int)),*q=calloc(n,sizeof(int)); MPI_Alltoall(s,1,MPI_INT,q,1,MPI_INT,MPI_COMM_WORLD); MPI_Barrier(MPI_COMM_WORLD);}
 MPI_Finalize(); if(r==0)printf("done %g\n",y); return 0;}
