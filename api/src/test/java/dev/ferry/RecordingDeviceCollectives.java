package dev.ferry;

import dev.ferry.spi.DeviceCollectivesDecorator;
import dev.ferry.spi.ForwardingTransport;
import dev.ferry.spi.Transport;
import java.util.ArrayList;
import java.util.List;

/** A device-collectives decorator for {@link BackendSelectionTest}: wraps and records what it wrapped. */
public final class RecordingDeviceCollectives implements DeviceCollectivesDecorator {
    /** The backends wrapped so far, with the setting each was wrapped under. */
    static final List<String> WRAPPED = new ArrayList<>();

    /** The wrapper's type, so that a test can tell a decorated transport. */
    static final class Wrapped extends ForwardingTransport {
        Wrapped(Transport inner) {
            super(inner);
        }
    }

    @Override
    public Transport decorate(Transport world, Settings settings) {
        WRAPPED.add(world.backend() + " " + settings.get(FerrySettings.DEVICE_COLLECTIVES));
        return new Wrapped(world);
    }
}
