package dev.ferry.spi;

/** What a provider may ask while probing. */
public interface ProbeContext {
    /** How this process was launched. */
    Launch launch();

    /** The probe of another provider (memoized): decorators such as staged ask for their inner backend. */
    Probe probe(String provider);

    /**
     * A setting: the system property {@code key}, else the environment variable made from it
     * ({@code ferry.staged.chunk} -> {@code FERRY_STAGED_CHUNK}), else {@code fallback}.
     */
    String setting(String key, String fallback);
}
