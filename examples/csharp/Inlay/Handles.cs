// Handles.cs: SafeHandles owning the native model and session, so that a Dispose or a
// finalizer racing with a call frees the object only once the call has returned.
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace Inlay
{
    /// <summary>Owns an inlay_model*. Sessions hold a reference to it (DangerousAddRef), so
    /// the native model is freed only after its last session, as inlay.h requires.</summary>
    internal sealed class ModelHandle : SafeHandle
    {
        static int live;
        internal static int Live { get { return Volatile.Read(ref live); } }

        ModelHandle() : base(IntPtr.Zero, true) { }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        internal void Counted() { Interlocked.Increment(ref live); }

        protected override bool ReleaseHandle()
        {
            Native.inlay_model_free(handle);
            Interlocked.Decrement(ref live);
            return true;
        }
    }

    /// <summary>Owns an inlay_session* and a reference to its model's handle.</summary>
    internal sealed class SessionHandle : SafeHandle
    {
        readonly ModelHandle model;

        internal SessionHandle(IntPtr session, ModelHandle model) : base(IntPtr.Zero, true)
        {
            this.model = model; // already AddRef'ed by the caller
            SetHandle(session);
        }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            Native.inlay_session_free(handle);
            model.DangerousRelease();
            return true;
        }
    }
}
