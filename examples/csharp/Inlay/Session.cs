// Session.cs: one conversation: generate and chat with streaming, Cancel from any thread
// or through a CancellationToken.
using System;
using System.Collections.Generic;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace Inlay
{
    /// <summary>One conversation. Calls on it run one at a time (another thread's call
    /// meanwhile fails with Status.Busy); Cancel may come from any thread. Dispose frees it
    /// once no call is using it (SafeHandle reference counting).</summary>
    public sealed class Session : IDisposable
    {
        readonly SessionHandle handle;

        internal Session(Model model, int contextLength)
        {
            var p = new Native.inlay_session_params();
            Native.inlay_session_params_init_size(ref p, Native.SizeOf<Native.inlay_session_params>());
            p.context_length = contextLength;
            ModelHandle mh = model.Handle; // ObjectDisposedException once the model is disposed
            bool added = false;
            mh.DangerousAddRef(ref added);
            try
            {
                IntPtr s;
                InlayException.Check(Native.inlay_session_create(mh, ref p, out s));
                handle = new SessionHandle(s, mh);
            }
            catch
            {
                mh.DangerousRelease();
                throw;
            }
        }

        public void Dispose() { handle.Dispose(); }

        /// <summary>Stops a call running on this session (Status.Cancelled, StopReason.Cancelled)
        /// after at most one more token. Any thread; ignored while no call runs.</summary>
        public void Cancel() { InlayException.Check(Native.inlay_session_cancel(handle)); }

        // For a CancellationToken's callback, which may run on any thread and whose
        // exceptions would reach whoever cancelled the token.
        void CancelQuietly()
        {
            try { Native.inlay_session_cancel(handle); }
            catch (ObjectDisposedException) { }
        }

        public void Reset() { InlayException.Check(Native.inlay_session_reset(handle)); }

        public int TokenCount
        {
            get
            {
                UIntPtr n;
                InlayException.Check(Native.inlay_session_n_tokens(handle, out n));
                return (int)n;
            }
        }

        delegate Status Invoke(ref Native.inlay_generate_params p, out IntPtr result);

        // One generating call: the token delegate lives until the call returns, and the
        // token's registration turns its cancellation into inlay_session_cancel.
        Result Run(GenerateOptions options, Func<int, string, bool> onToken, CancellationToken ct, Invoke invoke,
                   List<IntPtr> owned)
        {
            Native.inlay_generate_params p = (options ?? new GenerateOptions()).ToNative(owned);
            Exception thrown = null;
            Native.TokenFn callback = null;
            if (onToken != null || ct.CanBeCanceled)
            {
                callback = (token, piece, len, user) =>
                {
                    // Exceptions must not cross the native frames: keep the first, stop, rethrow.
                    try
                    {
                        // A token cancelled before the library registered the call: stop now.
                        if (ct.IsCancellationRequested) CancelQuietly();
                        return onToken == null || onToken(token, Utf8.Decode(piece, (int)len));
                    }
                    catch (Exception e) { thrown = thrown ?? e; return false; }
                };
                p.on_token = Marshal.GetFunctionPointerForDelegate(callback);
            }
            IntPtr r;
            Status status;
            string message = null;
            using (ct.Register(CancelQuietly))
            {
                status = invoke(ref p, out r);
                if (status != Status.Ok) message = Utf8.Decode(Native.inlay_last_error());
            }
            GC.KeepAlive(callback);
            Result result = r == IntPtr.Zero ? null : Result.Take(r);
            if (thrown != null) ExceptionDispatchInfo.Capture(thrown).Throw();
            if (status != Status.Ok)
            {
                Exception inner = status == Status.Cancelled && ct.IsCancellationRequested
                    ? new OperationCanceledException(ct) : null;
                throw new InlayException(status, message, inner) { Result = result };
            }
            return result;
        }

        /// <summary>Appends prompt and generates. onToken gets each token and its text on this
        /// thread (false stops: StopReason.Callback). A cancellation throws InlayException
        /// (Status.Cancelled) whose Result holds what was produced.</summary>
        public Result Generate(string prompt, GenerateOptions options = null, Func<int, string, bool> onToken = null,
                               CancellationToken ct = default(CancellationToken))
        {
            byte[] cprompt = Utf8.Encode(prompt, "the prompt");
            var owned = new List<IntPtr>();
            try
            {
                return Run(options, onToken, ct, (ref Native.inlay_generate_params p, out IntPtr r) =>
                    Native.inlay_session_generate(handle, cprompt, ref p, out r), owned);
            }
            finally { Utf8.FreeAll(owned); }
        }

        /// <summary>Renders the conversation with the chat template, processes what the session
        /// lacks of it and generates the reply (pass each reply back as an "assistant" message).</summary>
        public Result Chat(IList<ChatMessage> messages, ChatOptions chat = null, GenerateOptions options = null,
                           Func<int, string, bool> onToken = null, CancellationToken ct = default(CancellationToken))
        {
            var owned = new List<IntPtr>();
            try
            {
                Native.inlay_chat_message[] m = ChatMessage.ToNative(messages, owned);
                Native.inlay_chat_params cp = ChatOptions.ToNative(chat, owned);
                return Run(options, onToken, ct, (ref Native.inlay_generate_params p, out IntPtr r) =>
                    Native.inlay_session_chat(handle, m, (UIntPtr)m.Length, ref cp, ref p, out r), owned);
            }
            finally { Utf8.FreeAll(owned); }
        }
    }
}
