// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.reliability.ranks;

import dev.ferry.FerrySettings;
import dev.ferry.Settings;
import java.io.IOException;

/**
 * A rank program for launch checks (started by {@code ./ferry run}, without MPI): prints one line
 * with where it runs and what reached it of its launcher's environment: its host name, working
 * directory, the variable {@code FERRY_TEST_ECHO} and the setting {@code ferry.log} with its source.
 */
public final class SettingsEcho {
    private SettingsEcho() {
    }

    public static void main(String[] args) throws IOException {
        Settings s = Settings.process();
        System.out.println("settings-echo: host=" + HostIdentity.hostname() + " dir=" + System.getProperty("user.dir")
                + " FERRY_TEST_ECHO=" + System.getenv("FERRY_TEST_ECHO")
                + " ferry.log=" + s.text(FerrySettings.LOG) + " from " + s.source(FerrySettings.LOG));
    }
}
