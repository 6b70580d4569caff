// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.Communicator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * The conformance suite on communicators of one rank each ({@code split(rank, 0)} of the world's
 * duplicate), each with its own one-rank NCCL communicator: what one GPU can exercise when several
 * ranks share it (NCCL refuses the world then, not the one-rank communicators). GPU machines only;
 * see backend-nccl/README.md, "GPU test plan".
 */
public class NcclSplitByRankContract extends NcclContract {
    private Communicator parent;

    @BeforeEach
    void splitByRank() {
        parent = comm;
        comm = parent.split(parent.rank(), 0);
        rank = comm.rank();
        size = comm.size();
    }

    @AfterEach
    void closeParent() {
        // runs before the suite's own @AfterEach, which closes the one-rank communicator
        parent.close();
    }

    @Override
    protected boolean spansTheJob() {
        return false; // one rank of the job per communicator
    }
}
