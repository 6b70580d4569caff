// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

/**
 * A setting ({@code -Dferry.x.y} or {@code FERRY_X_Y}) has a value Ferry does not accept. The
 * message names the key, the value, where it came from and what is accepted. Thrown by
 * {@link Ferry#open()} and {@link Ferry#report()}, which read every setting on the class path
 * first, and wherever a setting is read before that.
 */
public class InvalidSettingException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    private final String key;
    private final String value;

    /**
     * @param key      the setting's key, {@code ferry.x.y}
     * @param value    the text given (trimmed)
     * @param source   where it came from: {@code -Dferry.x.y} or {@code FERRY_X_Y}
     * @param accepted what the setting accepts, e.g. {@code one of auto, ipc, host}
     */
    public InvalidSettingException(String key, String value, String source, String accepted) {
        super(key + "='" + value + "' (from " + source + ") is not accepted: expected " + accepted);
        this.key = key;
        this.value = value;
    }

    /**
     * A value that parses but cannot serve what it was used for: {@code message} says why.
     *
     * @param key     the setting's key, {@code ferry.x.y}
     * @param value   the text given (trimmed)
     * @param message the whole message, naming key, value and why it cannot be used
     */
    public InvalidSettingException(String key, String value, String message) {
        super(message);
        this.key = key;
        this.value = value;
    }

    /** The setting's key, {@code ferry.x.y}. */
    public String key() {
        return key;
    }

    /** The rejected text. */
    public String value() {
        return value;
    }
}
