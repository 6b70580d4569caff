// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * The settings one module declares, found through {@link ServiceLoader} (each module lists its
 * catalog in {@code META-INF/services/dev.ferry.spi.SettingsCatalog}) so that tools can list
 * every setting on the class path.
 */
public interface SettingsCatalog {
    /** The module's settings, in the order a table shows them. */
    List<Setting<?>> settings();

    /** Every setting of every catalog on the class path, catalogs in class-path order. */
    static List<Setting<?>> all() {
        List<Setting<?>> all = new ArrayList<>();
        for (SettingsCatalog c : ServiceLoader.load(SettingsCatalog.class, SettingsCatalog.class.getClassLoader())) {
            all.addAll(c.settings());
        }
        return all;
    }

    /** The setting named {@code key} among {@link #all()}, if one is registered. */
    static Optional<Setting<?>> find(String key) {
        return all().stream().filter(s -> s.key().equals(key)).findFirst();
    }
}
