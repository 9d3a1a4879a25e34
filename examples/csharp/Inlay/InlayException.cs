// InlayException.cs: a failed call, carrying its status and inlay_last_error's message.
using System;

namespace Inlay
{
    /// <summary>A failed inlay call: its status and the message of inlay_last_error. A
    /// cancelled or KV_FULL generation also carries what it produced in Result.</summary>
    public class InlayException : Exception
    {
        public Status Status { get; private set; }
        public Result Result { get; internal set; }

        public InlayException(Status status, string message, Exception inner = null) : base(message, inner)
        {
            Status = status;
        }

        /// <summary>The library's name of a status ("INLAY_ERR_IO", ...).</summary>
        public static string StatusName(Status status) { return Utf8.Decode(Native.inlay_status_name(status)); }

        // inlay_last_error is per thread; a P/Invoke runs on the calling thread, so the
        // message read right after the failing call is that call's.
        internal static void Check(Status status)
        {
            if (status != Status.Ok) throw new InlayException(status, Utf8.Decode(Native.inlay_last_error()));
        }

        internal static InlayException Invalid(string message)
        {
            return new InlayException(Status.InvalidArgument, "INLAY_ERR_INVALID_ARGUMENT: " + message);
        }
    }
}
