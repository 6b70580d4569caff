// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * No backend could be opened: the named one is unknown or unavailable, or auto-selection found
 * none. The message carries the whole selection report: every provider and why it was rejected.
 */
public class BackendUnavailableException extends FerryException {
    private static final long serialVersionUID = 1L;
    private final transient SelectionReport report;

    public BackendUnavailableException(String message, SelectionReport report, Throwable cause) {
        super(message + System.lineSeparator() + report.table(), cause);
        this.report = report;
    }

    /** The probe results that led to this failure. */
    public SelectionReport report() {
        return report;
    }
}
