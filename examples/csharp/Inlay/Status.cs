// Status.cs: the enums of inlay.h (statuses, stop reasons, devices, thinking).

namespace Inlay
{
    /// <summary>inlay_status.</summary>
    public enum Status
    {
        Ok = 0, InvalidArgument = 1, IO = 2, BadFormat = 3, Truncated = 4, Unsupported = 5, Missing = 6,
        ShapeMismatch = 7, OutOfMemory = 8, Cancelled = 9, ContextFull = 10, KvFull = 11, BufferTooSmall = 12,
        Busy = 13, InvalidToken = 14, InvalidUtf8 = 15, BadWeights = 16, Internal = 99
    }

    /// <summary>inlay_stop_reason.</summary>
    public enum StopReason { None = 0, Eog = 1, MaxTokens = 2, StopString = 3, Callback = 4, Cancelled = 5, ContextFull = 6 }

    /// <summary>inlay_device.</summary>
    public enum Device { Auto = 0, Cpu = 1, Cuda = 2 }

    /// <summary>inlay_thinking.</summary>
    public enum Thinking { Default = 0, Off = 1, On = 2 }
}
