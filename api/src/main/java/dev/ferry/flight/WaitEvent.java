// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * JFR event {@code dev.ferry.Wait}: a wait, test or cancel of a request ({@code waitFor},
 * {@code test}, {@code Request.waitAny}, {@code cancel}), or MPI_Finalize, from its start to its
 * return.
 */
@Name("dev.ferry.Wait")
@Label("Ferry Wait")
@Category({"Ferry"})
@Description("A wait, test or cancel of a request, or MPI_Finalize")
@StackTrace(false)
final class WaitEvent extends jdk.jfr.Event {
    @Label("Rank")
    @Description("World rank of this process")
    int rank;

    @Label("Operation")
    String operation;

    @Label("Subject")
    @Description("What it waited for: the request, the requests, or the MPI library")
    String subject;
}
