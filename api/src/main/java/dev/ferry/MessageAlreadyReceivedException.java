// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * A {@link MatchedMessage} was received a second time: a matched message is one message, and
 * {@link MatchedMessage#recv} or {@link MatchedMessage#irecv} receives it once. Rejected before any
 * native call; the communicator stays usable.
 */
public class MessageAlreadyReceivedException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    public MessageAlreadyReceivedException(String message) {
        super(message);
    }
}
